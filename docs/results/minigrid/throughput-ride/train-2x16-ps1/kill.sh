#!/usr/bin/env bash
# Stops run 'a3c' (log dir /work/main/docs/results/minigrid/throughput-ride/train-2x16-ps1): workers first, so that
# the chief can write a last checkpoint, then the parameter server and TensorBoard.
exec /work/main/.venv/bin/python /work/main/train.py --stop --log-dir /work/main/docs/results/minigrid/throughput-ride/train-2x16-ps1
