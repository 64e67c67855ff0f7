"""Import-time fixes that must be in place before anything imports mlagents: protobuf 4-6, numpy 2, Python 3.12+.

The fixes act while a module of mlagents is being imported, which in ``mlagents-learn`` happens before any
plugin of ours is loaded, so they are ``sys.meta_path`` finders installed at interpreter start-up by the
``mlagents_plugins_boot.pth`` file that ``pip install`` puts next to this module (and by
``mlagents_plugins/__init__.py``, for processes that import us first).  This is a top-level module, not part
of ``mlagents_plugins``, because importing that package imports torch and mlagents, i.e. the very modules
being intercepted; this module imports only the standard library until a matching import happens.

They are listed in ``mlagents_plugins.host.patches`` (``protobuf_descriptors``, ``numpy_aliases``,
``entry_point_groups``) with ``install_<name>`` as installers.  ``boot()`` applies the same guard
(opt-out variable, mlagents version) at the first matching import, without importing that package.

**protobuf_descriptors.** mlagents-envs 1.1.0 ships ``mlagents_envs/communicator_objects/*_pb2.py`` generated
by an old protoc: they build descriptors directly (``_descriptor.FileDescriptor(...)``), which protobuf >= 4
refuses ("Descriptors cannot be created directly") unless the whole process runs protobuf's slow pure-Python
backend.  Each module embeds its ``.proto`` file as a serialized ``FileDescriptorProto``.  The finder reads
those bytes out of the installed file (parsed with ``ast``; the module is never executed), adds them to the
default descriptor pool and builds the module's names (``DESCRIPTOR``, message classes, enum wrappers and
values, ``_UPPERCASE`` descriptors) with protobuf's ``builder``, the calls current protoc output makes.  The
wire format is the descriptor's, so messages serialize to the same bytes as with the original modules
(tests/test_boot_hooks.py).  By protobuf version (``protobuf_mode()``): 3.20.x (mlagents' pin) and older keep
the original modules; 4.21 to 6.x get the rebuilt ones; anything else is refused with ``UnsupportedProtobuf``
naming both versions (a command-line run prints that one line and exits 1).

**numpy_aliases.** ``mlagents/trainers/buffer.py`` annotates a parameter with ``np.float``, an alias numpy
removed in 1.24, so the module fails to import on numpy 2.  While (and only while) that module executes,
``numpy.float`` is bound to ``float`` (what the alias was); afterwards numpy is as it was.

**entry_point_groups.** mlagents' plugin loaders (``mlagents.plugins.trainer_type`` / ``.stats_writer``) treat
``importlib.metadata.entry_points()`` as a dict of groups, which Python 3.12 removed: ``mlagents-learn`` stops
with ``AttributeError: 'str' object has no attribute '_key'`` before loading any plugin.  On 3.12+ those two
modules get an ``importlib_metadata`` whose ``entry_points()`` returns that dict (same entry points).
"""
import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from typing import Dict, Optional, Tuple

PROTOBUF = "protobuf_descriptors"
NUMPY = "numpy_aliases"
ENTRY_POINTS = "entry_point_groups"
# Opt-out variables ("1" keeps ML-Agents' behaviour); patches.py lists the same names (a test checks).
OPT_OUT = {
    PROTOBUF: "MLAGENTS_PLUGINS_PROTOBUF_ORIGINAL",
    NUMPY: "MLAGENTS_PLUGINS_NUMPY_ORIGINAL",
    ENTRY_POINTS: "MLAGENTS_PLUGINS_ENTRY_POINTS_ORIGINAL",
}
FORCE_REBUILD = "MLAGENTS_PLUGINS_PROTOBUF_REBUILD"  # "1": rebuild on protobuf 3.20 too (tests, benchmarks)
VERSIONS: Tuple[str, ...] = ("1.1.0",)  # mlagents / mlagents-envs versions whose modules these were checked on

PB_PACKAGE = "mlagents_envs.communicator_objects"
SUPPORTED_PROTOBUF = "3.20.x (as mlagents pins it) or 4.21 to 6.x"
_REBUILD_RANGE = ((4, 21), (7, 0))  # [low, high): protobuf versions whose builder API the rebuild was tested on
BUFFER_MODULE = "mlagents.trainers.buffer"
PLUGIN_MODULES = ("mlagents.plugins.trainer_type", "mlagents.plugins.stats_writer")

# The specs the standard path finder returns for the modules these finders took over: {module name: spec}.
ORIGINAL: Dict[str, importlib.machinery.ModuleSpec] = {}


class UnsupportedProtobuf(ImportError):
    """The installed protobuf is one the rebuild does not know; the message names it and the supported ones."""


# --- protobuf_descriptors -------------------------------------------------------------------------------


def protobuf_version() -> str:
    import google.protobuf

    return google.protobuf.__version__


def _major_minor(version: str) -> Optional[Tuple[int, int]]:
    try:
        major, minor = version.split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None


def protobuf_mode(version: Optional[str] = None) -> str:
    """``"original"``, ``"rebuild"`` or ``"refuse"`` for a protobuf version (default: the installed one)."""
    version = protobuf_version() if version is None else version
    parsed = _major_minor(version)
    if parsed is None:
        return "refuse"
    if parsed < (3, 21):
        # 3.20 is the first protobuf with internal.builder, so forcing the rebuild needs at least that.
        return "rebuild" if os.environ.get(FORCE_REBUILD) == "1" and parsed >= (3, 20) else "original"
    low, high = _REBUILD_RANGE
    return "rebuild" if low <= parsed < high else "refuse"


def refusal(version: str) -> str:
    return (
        f"mlagents-plugins: protobuf {version} is installed, but ML-Agents' messages run only on protobuf "
        f"{SUPPORTED_PROTOBUF}; install one of those, e.g. pip install 'protobuf>=4.21,<7'"
    )


def serialized_file(source: str) -> bytes:
    """The serialized ``FileDescriptorProto`` a generated ``*_pb2.py`` source embeds.

    Old protoc writes ``FileDescriptor(..., serialized_pb=_b('...'))`` (a latin-1 str), protoc 3.19/3.20 writes
    ``AddSerializedFile(b'...')``; any other shape is an error rather than a guess.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr == "AddSerializedFile" and node.args:
            found.append(ast.literal_eval(node.args[0]))
        for keyword in node.keywords:
            if keyword.arg == "serialized_pb":
                value = keyword.value
                if isinstance(value, ast.Call) and len(value.args) == 1:  # _b('...')
                    value = value.args[0]
                found.append(ast.literal_eval(value))
    if len(found) != 1:
        raise ImportError(f"expected one serialized file descriptor in the module, found {len(found)}")
    data = found[0]
    return data.encode("latin1") if isinstance(data, str) else data


def _module_for_proto(proto_path: str) -> str:
    return proto_path[: -len(".proto")].replace("/", ".") + "_pb2"


class _RebuildLoader(importlib.abc.Loader):
    def __init__(self, original: importlib.machinery.ModuleSpec):
        self.original = original

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        from google.protobuf import descriptor_pb2, descriptor_pool
        from google.protobuf.internal import builder

        with open(self.original.origin, encoding="utf-8") as f:
            data = serialized_file(f.read())
        file_proto = descriptor_pb2.FileDescriptorProto.FromString(data)
        namespace = module.__dict__
        for dependency in file_proto.dependency:  # their files must be in the pool first
            name = _module_for_proto(dependency)
            # bound under protoc's alias too, as the generated module does
            namespace[name.replace("_", "__").replace(".", "_dot_")] = importlib.import_module(name)
        pool = descriptor_pool.Default()
        try:
            file_descriptor = pool.FindFileByName(file_proto.name)
        except KeyError:
            pool.AddSerializedFile(data)
            file_descriptor = pool.FindFileByName(file_proto.name)
        namespace["DESCRIPTOR"] = file_descriptor
        builder.BuildMessageAndEnumDescriptors(file_descriptor, namespace)
        builder.BuildTopDescriptorsAndMessages(file_descriptor, module.__name__, namespace)


class ProtobufFinder(importlib.abc.MetaPathFinder):
    """Finds ``mlagents_envs.communicator_objects.*_pb2`` and rebuilds them when the installed protobuf needs it."""

    def __init__(self, check_guard: bool):
        self.check_guard = check_guard  # set by boot(): evaluate opt-out and version at the first import

    def find_spec(self, fullname, path=None, target=None):
        if not (fullname.startswith(PB_PACKAGE + ".") and fullname.endswith("_pb2")):
            return None
        if self.check_guard and not _boot_allowed(PROTOBUF, "mlagents_envs"):
            return None
        version = protobuf_version()
        how = protobuf_mode(version)
        if how == "original":
            return None
        if how == "refuse":
            _exit_cleanly_on(UnsupportedProtobuf)
            raise UnsupportedProtobuf(refusal(version))
        original = importlib.machinery.PathFinder.find_spec(fullname, path)
        if original is None or not (original.origin or "").endswith(".py"):
            return None
        ORIGINAL.setdefault(fullname, original)
        return importlib.util.spec_from_file_location(fullname, original.origin, loader=_RebuildLoader(original))


def _exit_cleanly_on(kind) -> None:
    """Make a process that dies of ``kind`` print its message as one line, without a traceback.

    Only an uncaught exception reaches ``sys.excepthook``: code that catches the ImportError still can.
    """
    previous = sys.excepthook
    if getattr(previous, "_mlagents_plugins_kind", None) is kind:
        return

    def hook(exc_type, exc, tb):
        seen = exc
        while seen is not None and not isinstance(seen, kind):
            seen = seen.__cause__ or seen.__context__
        if seen is None:
            return previous(exc_type, exc, tb)
        sys.stderr.write(f"{seen}\n")
        sys.stderr.flush()

    hook._mlagents_plugins_kind = kind  # type: ignore[attr-defined]
    sys.excepthook = hook


# --- numpy_aliases --------------------------------------------------------------------------------------


def numpy_needs_aliases() -> bool:
    """numpy >= 1.24 removed ``np.float`` (1.20 to 1.23 still have it, deprecated)."""
    import numpy

    return _major_minor(numpy.__version__) >= (1, 24)


class _WrappingLoader(importlib.abc.Loader):
    """A loader that runs the original module's own loader, with something around it (subclasses)."""

    def __init__(self, original: importlib.machinery.ModuleSpec):
        self.original = original

    def create_module(self, spec):
        return self.original.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.original.loader.exec_module(module)


class _AliasLoader(_WrappingLoader):
    """Runs the original loader with ``numpy.float`` bound to ``float`` for the duration of the module body."""

    def exec_module(self, module) -> None:
        import numpy

        added = numpy_needs_aliases()
        if added:
            numpy.float = float  # type: ignore[attr-defined]
        try:
            super().exec_module(module)
        finally:
            if added:
                del numpy.float  # type: ignore[attr-defined]


class NumpyAliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``mlagents.trainers.buffer`` and, on numpy >= 1.24, imports it with the alias it needs."""

    def __init__(self, check_guard: bool):
        self.check_guard = check_guard

    def find_spec(self, fullname, path=None, target=None):
        if fullname != BUFFER_MODULE:
            return None
        if self.check_guard and not _boot_allowed(NUMPY, "mlagents.trainers"):
            return None
        if not numpy_needs_aliases():
            return None
        original = importlib.machinery.PathFinder.find_spec(fullname, path)
        if original is None or original.loader is None:
            return None
        ORIGINAL.setdefault(fullname, original)
        spec = importlib.util.spec_from_file_location(fullname, original.origin, loader=_AliasLoader(original))
        return spec


# --- entry_point_groups ---------------------------------------------------------------------------------


def entry_points_need_groups() -> bool:
    """Python 3.12 dropped the dict interface of ``importlib.metadata.entry_points()`` that mlagents uses."""
    return sys.version_info >= (3, 12)


class _EntryPointsByGroup:
    """``importlib.metadata`` whose ``entry_points()`` answers as on Python <= 3.11: ``{group: entry points}``."""

    def __getattr__(self, name):
        import importlib.metadata

        return getattr(importlib.metadata, name)

    @staticmethod
    def entry_points(**selection):
        import importlib.metadata

        if selection:
            return importlib.metadata.entry_points(**selection)
        found = importlib.metadata.entry_points()
        if isinstance(found, dict):  # Python <= 3.11 answers {group: entry points} itself
            return {group: list(entry_points) for group, entry_points in found.items()}
        groups: Dict[str, list] = {}
        for entry_point in found:
            groups.setdefault(entry_point.group, []).append(entry_point)
        return groups


ENTRY_POINTS_BY_GROUP = _EntryPointsByGroup()


class _EntryPointsLoader(_WrappingLoader):
    """Runs the original loader, then gives the module the grouped ``importlib_metadata`` it expects."""

    def exec_module(self, module) -> None:
        super().exec_module(module)
        module.importlib_metadata = ENTRY_POINTS_BY_GROUP


class EntryPointsFinder(importlib.abc.MetaPathFinder):
    """Finds mlagents' plugin loaders (``mlagents.plugins.trainer_type`` / ``.stats_writer``) on Python 3.12+."""

    def __init__(self, check_guard: bool):
        self.check_guard = check_guard

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in PLUGIN_MODULES or not entry_points_need_groups():
            return None
        if self.check_guard and not _boot_allowed(ENTRY_POINTS, "mlagents.trainers"):
            return None
        original = importlib.machinery.PathFinder.find_spec(fullname, path)
        if original is None or original.loader is None:
            return None
        ORIGINAL.setdefault(fullname, original)
        return importlib.util.spec_from_file_location(fullname, original.origin, loader=_EntryPointsLoader(original))


# --- installing ------------------------------------------------------------------------------------------

_FINDERS = {PROTOBUF: ProtobufFinder, NUMPY: NumpyAliasFinder, ENTRY_POINTS: EntryPointsFinder}


def _boot_allowed(name: str, versioned_package: str) -> bool:
    """``patches.allowed`` for the boot path: the opt-out variable and the (already imported) parent's version."""
    if os.environ.get(OPT_OUT[name]) == "1":
        return False
    parent = sys.modules.get(versioned_package)  # the parent package of the module being imported, or
    if parent is None:  # mlagents.trainers, whose __init__ holds only version strings
        parent = importlib.import_module(versioned_package)
    return getattr(parent, "__version__", None) in VERSIONS


def finder(name: str):
    return next((f for f in sys.meta_path if isinstance(f, _FINDERS[name])), None)


def _set_finder(name: str, wanted: bool, check_guard: bool) -> None:
    present = finder(name)
    if not wanted:
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _FINDERS[name])]
    elif present is None:
        sys.meta_path.insert(0, _FINDERS[name](check_guard))
    elif not check_guard:
        present.check_guard = False


def boot() -> None:
    """Called at start-up by the .pth file: installs the finders; each checks its guard at its first import."""
    for name in _FINDERS:
        _set_finder(name, True, check_guard=True)


def _install(name: str) -> bool:
    from mlagents_plugins.host import patches

    allowed = patches.allowed(name)
    _set_finder(name, allowed, check_guard=False)
    return allowed


# Whether the installed stack needs each fix (what its installer returns when the fix is allowed).
NEEDED = {
    PROTOBUF: lambda: protobuf_mode() == "rebuild",
    NUMPY: lambda: numpy_needs_aliases(),
    ENTRY_POINTS: lambda: entry_points_need_groups(),
}


def install_protobuf_descriptors() -> bool:
    """Installer of ``protobuf_descriptors``: whether ML-Agents' message modules are (to be) rebuilt here.

    Not allowed (opt-out variable, other mlagents): the finder is removed.  Allowed: it stays, and leaves a
    process alone whose protobuf runs the original modules (then this returns False).
    """
    return _install(PROTOBUF) and NEEDED[PROTOBUF]()


def install_numpy_aliases() -> bool:
    """Installer of ``numpy_aliases``: whether ``mlagents.trainers.buffer`` needs (or got) the alias here."""
    return _install(NUMPY) and NEEDED[NUMPY]()


def install_entry_point_groups() -> bool:
    """Installer of ``entry_point_groups``: whether mlagents' plugin loaders need (or got) the grouped view."""
    return _install(ENTRY_POINTS) and NEEDED[ENTRY_POINTS]()
