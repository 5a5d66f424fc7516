"""Adapters from JAX environment libraries to rljax's ``JaxEnv`` protocol
(``rljax.env.jax_env``), selected by an id's prefix: ``"gymnax:CartPole-v1"``.

Each library is an optional extra (``pip install 'rljax[gymnax]'``), imported only when an env
of it is built.
"""
