"""What ML-Agents' message modules look like and how their messages serialize, as JSON, for comparing stacks.

``python -m mlagents_plugins.testing.protobuf_dump`` imports every ``mlagents_envs.communicator_objects.*_pb2``
module the current process gets (the originals, or the ones ``mlagents_plugins_boot`` rebuilt) and prints, per
module: how it was loaded, its names (message classes, enums and their values, descriptors, aliases of the
modules it depends on) and, for every message type (nested ones and map entries included), the bytes of a
message with every field set to a distinct value (``filled``) and of the same message parsed and serialized
again.  tests/test_boot_hooks.py compares the rebuilt modules' dump against the originals' and against
``tests/data/protobuf_vectors.json``, which ``scripts/make_protobuf_vectors.py`` writes from the original
modules under protobuf 3.20.

This module deliberately imports nothing from ``mlagents_plugins`` (whose import installs the hooks).
"""
import importlib
import json
import pkgutil
import sys

PACKAGE = "mlagents_envs.communicator_objects"
MAX_DEPTH = 3


def module_names():
    package = importlib.import_module(PACKAGE)
    return sorted(f"{PACKAGE}.{m.name}" for m in pkgutil.iter_modules(package.__path__) if m.name.endswith("_pb2"))


def _repeated(field) -> bool:
    from google.protobuf.descriptor import FieldDescriptor

    is_repeated = getattr(field, "is_repeated", None)  # protobuf >= 5.29 deprecates .label
    return bool(is_repeated) if is_repeated is not None else field.label == FieldDescriptor.LABEL_REPEATED


def _scalar(field, k: int):
    """A value for field ``field``, distinct per field and per element ``k``, that exercises the encoding
    (negative varints, 64-bit values, non-ASCII text, all byte values)."""
    from google.protobuf.descriptor import FieldDescriptor as F

    n = field.number * 10 + k
    t = field.type
    if t in (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32):
        return -(n * 1001 + 7)
    if t in (F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64):
        return -(2**40 + n)
    if t in (F.TYPE_UINT32, F.TYPE_FIXED32):
        return 2**31 + n
    if t in (F.TYPE_UINT64, F.TYPE_FIXED64):
        return 2**63 + n
    if t == F.TYPE_FLOAT:
        return n + 0.25  # exactly representable in float32
    if t == F.TYPE_DOUBLE:
        return n / 3.0
    if t == F.TYPE_BOOL:
        return True
    if t == F.TYPE_STRING:
        return f"s{n}-\u00e9\u4e2d"
    if t == F.TYPE_BYTES:
        return bytes((n + i) % 256 for i in range(0, 256, 37))
    if t == F.TYPE_ENUM:
        values = field.enum_type.values
        return values[(k + 1) % len(values)].number
    raise TypeError(f"unhandled field type {t} of {field.full_name}")


def fill(message, depth: int = 0):
    """Sets every field of ``message`` (one member per oneof, chosen by depth; submessages to MAX_DEPTH)."""
    from google.protobuf.descriptor import FieldDescriptor as F

    descriptor = message.DESCRIPTOR
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if oneof is not None and field is not oneof.fields[depth % len(oneof.fields)]:
            continue
        is_message = field.type in (F.TYPE_MESSAGE, F.TYPE_GROUP)
        if is_message and field.message_type.GetOptions().map_entry:
            key_field, value_field = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
            container = getattr(message, field.name)
            for k in range(2):
                key = _scalar(key_field, k)
                if value_field.type == F.TYPE_MESSAGE:
                    if depth < MAX_DEPTH:
                        fill(container[key], depth + 1)
                else:
                    container[key] = _scalar(value_field, k)
            continue
        if is_message:
            if depth >= MAX_DEPTH:
                continue
            if _repeated(field):
                for _ in range(2):
                    fill(getattr(message, field.name).add(), depth + 1)
            else:
                fill(getattr(message, field.name), depth + 1)
            continue
        if _repeated(field):
            getattr(message, field.name).extend(_scalar(field, k) for k in range(3))
        else:
            setattr(message, field.name, _scalar(field, 0))
    return message


def _message_classes(module):
    def walk(cls):
        yield cls
        for nested in cls.DESCRIPTOR.nested_types:
            yield from walk(getattr(cls, nested.name))

    for name, value in sorted(vars(module).items()):
        if isinstance(value, type) and hasattr(value, "DESCRIPTOR") and value.__module__ == module.__name__:
            yield from walk(value)


def _describe(name, value):
    from google.protobuf import descriptor as d
    from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

    if isinstance(value, type(sys)):
        return ["module", value.__name__] if value.__name__.startswith("mlagents_envs.") else None
    if isinstance(value, type) and hasattr(value, "DESCRIPTOR"):
        return ["message", value.DESCRIPTOR.full_name]
    if isinstance(value, EnumTypeWrapper):
        return ["enum", value.DESCRIPTOR.full_name, sorted(value.items())]
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return ["int", value]
    if isinstance(value, d.FileDescriptor):
        return ["file", value.name]
    for kind in (d.Descriptor, d.EnumDescriptor, d.ServiceDescriptor):
        if isinstance(value, kind):
            return [kind.__name__, value.full_name]
    return None  # helpers of the generated code (sys, _b, _sym_db, descriptor_pb2, ...)


def dump(name: str) -> dict:
    module = importlib.import_module(name)
    names = {}
    for key, value in sorted(vars(module).items()):
        if key.startswith("__"):
            continue
        described = _describe(key, value)
        if described is not None:
            names[key] = described
    messages = {}
    for cls in _message_classes(module):
        data = fill(cls()).SerializeToString(deterministic=True)
        again = cls.FromString(data).SerializeToString(deterministic=True)
        messages[cls.DESCRIPTOR.full_name] = {"filled": data.hex(), "reparsed": again.hex()}
    return {"loader": type(module.__spec__.loader).__name__, "names": names, "messages": messages}


def main() -> None:
    from google.protobuf import __version__ as protobuf_version
    from google.protobuf.internal import api_implementation

    out = {
        "protobuf": protobuf_version,
        "implementation": api_implementation.Type(),
        "modules": {name: dump(name) for name in module_names()},
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
