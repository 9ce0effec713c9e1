"""Meshes, sharded arrays and collectives: the multi-chip vocabulary."""
