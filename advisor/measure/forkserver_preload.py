"""What the fork server of the replicated protocol does once, on import, before it forks any
worker: import torch, Dynamo and Inductor and probe the CPU's vector ISA
(`torch_adapter.warm_compiler`). Each worker is a fork of that server, so it starts with all of
that done instead of paying it on its first compile (about 3 s per compiling worker here, and a
replicated run starts tens of them). The server is a process of its own: nothing of it is ever
timed, and nothing it does is compiled state (no graph, no cache entry).

Only `advisor.measure.replicate.context` names this module (multiprocessing imports it in the
server); importing it anywhere else would only cost those seconds there.
"""

from __future__ import annotations

from advisor.measure import arm_worker, torch_adapter

arm_worker.preload()
torch_adapter.warm_compiler()
