"""mlagents-plugins: extra trainers for Unity ML-Agents, registered as ``mlagents.trainer_type`` plugins.

Supported: Python 3.10 to 3.13.  On Python 3.10 (<=3.10.12) ``pip install .`` resolves mlagents 1.1.0 and its
own pins.  On newer Pythons mlagents' metadata refuses the interpreter, so ``scripts/setup_env.sh`` installs
mlagents with ``--no-deps`` plus the dependency set for that Python in ``requirements/`` (see its README) and
then this package with ``--no-deps``.  ``install_requires`` below states what this package itself works with
(it is wider than mlagents' pins: protobuf 4-6 and numpy 2 through ``mlagents_plugins_boot``).
"""
import os
import sysconfig

from setuptools import find_packages, setup

# mlagents_plugins_boot.pth must land in site-packages itself (a .pth file anywhere else is not read).
# Wheels have no "purelib root" data target, so it goes in as a data file at site-packages' path relative to
# the installation prefix, computed by the interpreter that builds (pip builds this package from source with
# the target interpreter): "lib/python3.X/site-packages" in a venv.
SITE_PACKAGES = os.path.relpath(sysconfig.get_paths()["purelib"], sysconfig.get_paths()["data"])

# One entry point per trainer module; each returns ({name: TrainerClass}, {name: SettingsClass}).
# A trainer is only listed here once it exists.
TRAINER_ENTRY_POINTS = [
    "fast_sac = mlagents_plugins.fast_sac.plugin:get_type_and_setting",
    "impala = mlagents_plugins.impala.plugin:get_type_and_setting",
    "muzero_repr = mlagents_plugins.muzero_repr.plugin:get_type_and_setting",
    "taac = mlagents_plugins.taac.plugin:get_type_and_setting",
]

setup(
    name="mlagents-plugins",
    version="0.2.0",
    description="Trainer plugins for Unity ML-Agents: fast SAC, TAAC, IMPALA, MuZero-style representation learning",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["mlagents_plugins", "mlagents_plugins.*"]),
    py_modules=["mlagents_plugins_boot"],
    data_files=[(SITE_PACKAGES, ["mlagents_plugins_boot.pth"])],
    include_package_data=True,
    python_requires=">=3.10,<3.14",
    classifiers=[
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
    ],
    install_requires=[
        "mlagents==1.1.0",
        "mlagents-envs==1.1.0",
        "torch>=2.1.1",
        # 1.24-1.26 removed np.long, which mlagents uses at run time; np.float is handled by numpy_aliases
        "numpy>=1.23.5,!=1.24.*,!=1.25.*,!=1.26.*,<3",
        "pyyaml>=3.1",
        "attrs>=19.3",
        "cattrs>=1.1,<1.7",
        "grpcio>=1.11",
        # up to 3.20: mlagents' generated modules as shipped; 4.21-6.x: rebuilt by mlagents_plugins_boot
        "protobuf>=3.6,<7",
        "onnx>=1.15.0",
        "Pillow>=4.2.1",
        "setuptools<81",  # mlagents imports pkg_resources
    ],
    extras_require={"test": ["pytest>=7", "ruff==0.17.6", "onnxruntime>=1.15", "matplotlib>=3.5"], "bench": ["matplotlib>=3.5"],
                    # Gymnasium tasks as ML-Agents environments (docs/gym.md); bench-gym adds the bench's SB3 peers.
                    "gym": ["gymnasium[mujoco]>=1.0"],
                    "bench-gym": ["gymnasium[mujoco]>=1.0", "stable-baselines3>=2.4", "sb3-contrib>=2.4"],
                    # Plain ray core (no extras): ray[default] needs protobuf >= 5, mlagents 1.1.0 needs < 3.21.
                    "ray": ["ray>=2.40,<3"]},
    entry_points={
        "mlagents.trainer_type": TRAINER_ENTRY_POINTS,
        # Loaded by every mlagents-learn run: restores the TorchScript ONNX exporter (see onnx_export.py)
        # for the built-in trainers too, even when no trainer of ours is used.
        "mlagents.stats_writer": ["mlagents_plugins = mlagents_plugins.host.hook:stats_writers"],
        "console_scripts": [
            "mlagents-plugins-scene = mlagents_plugins.envs.standin:main",
            "mlagents-plugins-replay = mlagents_plugins.replay.cli:main",
            # mlagents-learn with --ray-* options: environment copies on a Ray cluster (see README "Many machines").
            "mlagents-plugins-learn = mlagents_plugins.ray_envs.cli:main",
        ],
    },
)
