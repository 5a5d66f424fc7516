"""Shuffling rows inside a jitted program with single-operand integer sorts.

XLA's CPU sort is much faster on one array of unsigned integers than on the key and index
arrays ``argsort`` sorts together: measured on the project's 2-core machine (jax 0.10.2), a
shuffle of 4,000 rows took 842 us with ``argsort`` of random 32-bit keys and 185 us with one
``sort`` of 32-bit words that hold the random key in their high bits and the row's position in
their low bits. PPO shuffles its batch once per epoch (6 to 30 epochs an update), so this was up
to a fifth of a small update.

A word's random part is shorter than 32 bits, so two rows tie more often; a tie is resolved by
position, which is not random. Several rounds fix it: each round sorts the previous round's
order by fresh random keys, and a pair stays ordered by position only if it tied in every round.
The rounds are chosen so that at least 31 random bits separate any pair, as likely to tie as
two 31-bit keys.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

# Fewer random bits than this per round (shards of more than 2**23 rows): ``argsort`` instead.
_MIN_RANDOM_BITS = 8


def shuffled_positions(key: jax.Array, last: jax.Array, shuffle: bool = True) -> jax.Array:
    """Per row of ``last`` (bool ``[d, n]``), a permutation of ``0 .. n-1`` (int32 ``[d, n]``):
    the positions where ``last`` is False in random order, then those where it is True. With
    ``shuffle=False`` each group keeps its order."""
    d, n = last.shape
    flag = last.astype(jnp.uint32)
    index_bits = max(1, (n - 1).bit_length())
    random_bits = 31 - index_bits
    if random_bits < _MIN_RANDOM_BITS:
        bits = (
            jax.random.bits(key, (d, n), jnp.uint32) if shuffle else jnp.zeros((d, n), jnp.uint32)
        )
        return jnp.argsort((bits >> 1) | (flag << 31), axis=1).astype(jnp.int32)
    rounds = -(-31 // random_bits) if shuffle else 1
    positions = jnp.broadcast_to(jnp.arange(n, dtype=jnp.uint32), (d, n))
    low = jnp.uint32((1 << index_bits) - 1)
    order = positions  # order[i, j]: the row at position j
    for r in range(rounds):
        if shuffle:
            key, sub = jax.random.split(key)
            random = jax.random.bits(sub, (d, n), jnp.uint32) >> (32 - random_bits)
        else:
            random = jnp.zeros((d, n), jnp.uint32)
        # The flags of the rows in their current order (the first round's order is the rows').
        flags = flag if r == 0 else jnp.take_along_axis(flag, order.astype(jnp.int32), axis=1)
        words = (flags << 31) | (random << index_bits) | positions
        moved = (jnp.sort(words, axis=1) & low).astype(jnp.int32)
        order = jnp.take_along_axis(order, moved, axis=1)
    return order.astype(jnp.int32)


__all__ = ["shuffled_positions"]
