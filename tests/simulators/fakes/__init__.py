"""Fakes of batched simulators, written from their own sources (each docstring
cites the file and commit): their step order and output layout, small and
CPU-only."""
