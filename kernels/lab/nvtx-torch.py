#!/usr/bin/env python3
"""A PyTorch program marked with torch.cuda.nvtx ranges around real GPU work, for
nvtx-torch.sh: `matmul` (fp32 4096x4096 products, ~3 s), `pinned_copy` (host-to-device copies
from pinned memory, ~2 s), `idle` (1 s asleep), each inside an outer `step` range, twice.
Prints `at NS push|pop NAME` on CLOCK_MONOTONIC, so the phases can be checked against it."""
import time
import torch
import torch.cuda.nvtx as nvtx

def say(what, name):
    print(f"at {time.monotonic_ns()} {what} {name}", flush=True)

def rng(name, fn):
    say("push", name)
    nvtx.range_push(name)
    fn()
    torch.cuda.synchronize()
    nvtx.range_pop()
    say("pop", name)

dev = torch.device("cuda")
a = torch.randn(4096, 4096, device=dev)
b = torch.randn(4096, 4096, device=dev)
host = torch.empty(256 << 20, dtype=torch.uint8).pin_memory()
gpu_buf = torch.empty_like(host, device=dev)

def matmul():
    end = time.monotonic() + 3
    while time.monotonic() < end:
        for _ in range(20):
            torch.mm(a, b)
        torch.cuda.synchronize()

def copies():
    end = time.monotonic() + 2
    while time.monotonic() < end:
        gpu_buf.copy_(host, non_blocking=True)
        torch.cuda.synchronize()

for step in range(2):
    say("push", "step")
    nvtx.range_push("step")
    rng("matmul", matmul)
    rng("pinned_copy", copies)
    rng("idle", lambda: time.sleep(1))
    nvtx.range_pop()
    say("pop", "step")
