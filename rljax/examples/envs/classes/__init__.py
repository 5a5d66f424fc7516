"""Example environment classes (as ``ray.rllib.examples.envs.classes``), each at RLlib's module
path: ``from ray.rllib.examples.envs.classes.X import Y`` becomes
``from rljax.examples.envs.classes.X import Y``.

Single-agent: ``action_mask_env``, ``cartpole_crashing``, ``cartpole_sparse_rewards``,
``cartpole_with_dict_observation_space``, ``cartpole_with_large_observation_space``,
``cartpole_with_protobuf_observation_space`` (needs ``protobuf``), ``cliff_walking_wall_env``,
``correlated_actions_env``, ``debug_counter_env``, ``deterministic_envs``,
``env_with_subprocess``, ``fast_image_env``, ``look_and_push``, ``memory_leaking_env``,
``mock_env``, ``nested_space_repeat_after_me_env``, ``parametric_actions_cartpole``,
``random_env``, ``repeat_after_me_env``, ``repeat_initial_obs_env``, ``simple_corridor``,
``six_room_env``, ``stateless_cartpole``, ``stateless_pendulum``, ``ten_step_error_env``,
``transformed_action_space_env``, ``windy_maze_env``. Multi-agent (``multi_agent``):
``bandit_envs_discrete``, ``bandit_envs_recommender_system``, ``double_row_corridor_env``,
``guess_the_number_game``, ``pettingzoo_connect4`` (needs ``pettingzoo``),
``rock_paper_scissors``, ``tic_tac_toe``, ``two_step_game`` and the ``make_multi_agent`` envs of
the package itself.
"""
