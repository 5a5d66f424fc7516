"""RLlib's ``CartPoleObservation`` protobuf message
(``ray.rllib.examples.envs.classes.utils.cartpole_observations_proto``), built at import from
its definition (needs ``protobuf``)::

    syntax = "proto3";
    message CartPoleObservation {
      optional double x_pos = 1;
      optional double x_veloc = 2;
      optional double angle_pos = 3;
      optional double angle_veloc = 4;
    }

The fields have RLlib's numbers and types, so the bytes parse with RLlib's message too; they
are ``optional`` (explicit presence), so a set 0.0 is written as well and every observation
has the same length.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FIELDS = ("x_pos", "x_veloc", "angle_pos", "angle_veloc")


def _message_class() -> Any:
    file = descriptor_pb2.FileDescriptorProto(
        name="rljax_cartpole_observations.proto", syntax="proto3"
    )
    message = file.message_type.add(name="CartPoleObservation")
    for number, name in enumerate(FIELDS, start=1):
        message.oneof_decl.add(name=f"_{name}")  # proto3 "optional" is a one-field oneof
        message.field.add(
            name=name,
            number=number,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
            oneof_index=number - 1,
            proto3_optional=True,
        )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("CartPoleObservation"))


#: The message class: ``CartPoleObservation(x_pos=..., ...)``, ``SerializeToString()``,
#: ``ParseFromString(data)``.
CartPoleObservation = _message_class()

__all__ = ["FIELDS", "CartPoleObservation"]
