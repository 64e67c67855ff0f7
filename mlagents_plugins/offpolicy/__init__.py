"""Shared off-policy trainer base (replay intake, update cadence, replay save/load/resume); see trainer.py."""
