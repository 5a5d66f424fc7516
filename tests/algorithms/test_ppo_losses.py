import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.ppo.losses import PPOBatch, PPOLossConfig, ppo_loss
from rljax.networks.distributions import Categorical, DiagGaussian

LN3 = math.log(3.0)


def _batch(extra_row: bool = False) -> tuple[jnp.ndarray, jnp.ndarray, PPOBatch]:
    # Row 0: current p(a=0)=0.5, old logp=log .25 -> ratio 2, advantage 1 -> clipped term 1.2.
    # Row 1: current p(a=1)=0.25, old logp=log .5 -> ratio .5, advantage -2 -> min(-1, -1.6).
    dist_inputs = [[0.0, 0.0], [LN3, 0.0]]
    values = [1.0, 2.0]
    batch = dict(
        obs=[[0.0], [0.0]],
        action=[0, 1],
        action_logp=[math.log(0.25), math.log(0.5)],
        action_dist_inputs=[[0.0, 0.0], [0.0, 0.0]],
        vf_preds=[0.0, 0.0],
        advantages=[1.0, -2.0],
        value_targets=[3.0, 7.0],
        mask=[1.0, 1.0],
    )
    if extra_row:  # a masked auto-reset row with wild values must not change anything
        dist_inputs.append([50.0, -50.0])
        values.append(1e4)
        for k, v in dict(
            obs=[0.0],
            action=1,
            action_logp=-30.0,
            action_dist_inputs=[9.0, -9.0],
            vf_preds=0.0,
            advantages=1e3,
            value_targets=-1e4,
            mask=0.0,
        ).items():
            batch[k].append(v)
    batch = PPOBatch(**{k: jnp.asarray(v) for k, v in batch.items()})
    return jnp.asarray(dist_inputs), jnp.asarray(values), batch


CFG = PPOLossConfig(
    clip_param=0.2, vf_clip_param=10.0, vf_loss_coeff=0.5, entropy_coeff=0.01, use_kl_loss=True
)
ENTROPY = (math.log(2) + (0.75 * math.log(4 / 3) + 0.25 * math.log(4))) / 2
KL = (0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)) / 2


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("extra_row", [False, True])
def test_ppo_loss_hand_computed(jit, extra_row):
    dist_inputs, values, batch = _batch(extra_row)
    fn = lambda d, v, b, k: ppo_loss(d, v, b, Categorical(2), k, CFG)  # noqa: E731
    fn = jax.jit(fn) if jit else fn
    total, m = fn(dist_inputs, values, batch, jnp.float32(0.2))
    assert m["policy_loss"] == pytest.approx(-(1.2 - 1.6) / 2, rel=1e-5)
    assert m["vf_loss"] == pytest.approx((4 + 10) / 2, rel=1e-6)  # 25 clipped at 10
    assert m["vf_loss_unclipped"] == pytest.approx((4 + 25) / 2, rel=1e-6)
    assert m["entropy"] == pytest.approx(ENTROPY, rel=1e-5)
    assert m["mean_kl_loss"] == pytest.approx(KL, rel=1e-5)
    assert m["clip_fraction"] == pytest.approx(1.0)
    expected = 0.2 + 0.5 * 7 - 0.01 * ENTROPY + 0.2 * KL
    assert total == pytest.approx(expected, rel=1e-5)


def test_kl_term_only_with_use_kl_loss():
    dist_inputs, values, batch = _batch()
    on, _ = ppo_loss(dist_inputs, values, batch, Categorical(2), jnp.float32(0.2), CFG)
    off, _ = ppo_loss(
        dist_inputs,
        values,
        batch,
        Categorical(2),
        jnp.float32(0.2),
        CFG._replace(use_kl_loss=False),
    )
    assert float(on - off) == pytest.approx(0.2 * KL, rel=1e-4)


def test_no_vf_clip_uses_squared_error():
    dist_inputs, values, batch = _batch()
    _, m = ppo_loss(
        dist_inputs,
        values,
        batch,
        Categorical(2),
        jnp.float32(0.0),
        CFG._replace(vf_clip_param=None),
    )
    assert m["vf_loss"] == pytest.approx(14.5, rel=1e-6)


@pytest.mark.parametrize("extra_row", [False, True])
def test_vf_clip_mode_prediction_hand_computed(extra_row):
    # PPO2's clipping, vf_clip_param 0.5, sampling predictions 0 and 0: row 0 predicts 1
    # (clipped to 0.5; target 3: max(4, 6.25) = 6.25), row 1 predicts 2 (clipped to 0.5;
    # target 7: max(25, 42.25) = 42.25).
    dist_inputs, values, batch = _batch(extra_row)
    cfg = CFG._replace(vf_clip_param=0.5, vf_clip_mode="prediction")
    total, m = ppo_loss(dist_inputs, values, batch, Categorical(2), jnp.float32(0.2), cfg)
    assert m["vf_loss"] == pytest.approx((6.25 + 42.25) / 2, rel=1e-6)
    assert m["vf_loss_unclipped"] == pytest.approx((4 + 25) / 2, rel=1e-6)
    expected = 0.2 + 0.5 * (6.25 + 42.25) / 2 - 0.01 * ENTROPY + 0.2 * KL
    assert total == pytest.approx(expected, rel=1e-5)
    # Moving towards the target within the clip range is the plain error: the prediction 2
    # of row 1 sampled at 1.8 (clip range [1.3, 2.3]) gives 25, as unclipped.
    moved = batch._replace(vf_preds=batch.vf_preds.at[1].set(1.8))
    _, m = ppo_loss(dist_inputs, values, moved, Categorical(2), jnp.float32(0.2), cfg)
    assert m["vf_loss"] == pytest.approx((6.25 + 25) / 2, rel=1e-6)


def test_vf_clip_mode_prediction_gradient_is_ppo2s():
    # Row 0 only (mask row 1 out): beyond the clip range on the far side of the target the
    # clipped error is the larger and constant, so the critic gets no gradient; on the near
    # side the unclipped error is the larger: d/dv (v - 3)^2 = 2 (v - 3).
    dist_inputs, _, batch = _batch()
    batch = batch._replace(mask=jnp.asarray([1.0, 0.0]))
    cfg = CFG._replace(vf_clip_param=0.5, vf_clip_mode="prediction", use_kl_loss=False)

    def vf_loss(v0: jax.Array) -> jax.Array:
        values = jnp.stack([v0, jnp.float32(0.0)])
        return ppo_loss(dist_inputs, values, batch, Categorical(2), jnp.float32(0.0), cfg)[1][
            "vf_loss"
        ]

    assert float(jax.grad(vf_loss)(jnp.float32(1.0))) == pytest.approx(0.0)  # clipped 0.5
    assert float(jax.grad(vf_loss)(jnp.float32(-1.0))) == pytest.approx(2 * (-1.0 - 3.0))


def test_vf_clip_mode_is_checked_before_building():
    from rljax.algorithms.ppo import PPOConfig
    from rljax.utils.errors import ConfigError

    config = PPOConfig().environment("CartPole-v1").training(vf_clip_mode="value")
    with pytest.raises(ConfigError, match="vf_clip_mode='value'.*'squared_error' or 'prediction'"):
        config.validate()


def test_diag_gaussian_log_prob_entropy_kl():
    d = DiagGaussian(2)
    inputs = jnp.asarray([[0.0, 1.0, 0.0, math.log(2.0)]])  # mean (0, 1), std (1, 2)
    action = jnp.asarray([[1.0, 1.0]])
    expected_logp = (-0.5 - 0.5 * math.log(2 * math.pi)) + (
        -math.log(2.0) - 0.5 * math.log(2 * math.pi)
    )
    assert float(d.log_prob(inputs, action)[0]) == pytest.approx(expected_logp, rel=1e-6)
    expected_ent = 2 * 0.5 * math.log(2 * math.pi * math.e) + math.log(2.0)
    assert float(d.entropy(inputs)[0]) == pytest.approx(expected_ent, rel=1e-6)
    # KL(N(0,1) || N(1,2)) per dim = log(2) + (1 + 1)/(2*4) - 1/2
    p = jnp.asarray([[0.0, 0.0]])
    q = jnp.asarray([[1.0, math.log(2.0)]])
    assert float(DiagGaussian(1).kl(p, q)[0]) == pytest.approx(math.log(2) + 2 / 8 - 0.5, rel=1e-6)
    samples = d.sample(jax.random.PRNGKey(0), jnp.repeat(inputs, 20000, axis=0))
    np.testing.assert_allclose(samples.mean(0), [0.0, 1.0], atol=0.05)
    np.testing.assert_allclose(samples.std(0), [1.0, 2.0], atol=0.05)
