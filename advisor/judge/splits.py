"""Graphs split on purpose: DDP's optimizer (`torch._dynamo.config.optimize_ddp`, on by default)
splits a frame's graph at DistributedDataParallel's gradient-bucket boundaries, so each bucket's
all-reduce can start while the backward of the graphs before it still runs. The pieces show in
the profile as several graph calls inside one compiled region. They are not breaks: no line is
to blame and nothing is to be rewritten. What they cost is estimated from the graph calls they
add (one more forward graph call per piece, and in training one more backward graph call), at
the probe's price of one graph call. The autograd engine's hop into each extra backward graph
is left out: under DDP that hop also runs the reducer's gradient hooks (bucketing, launching and
waiting on the all-reduce), which one graph would run too. What one graph instead of the pieces
saves, overlap lost included, is measured by the `optimize_ddp=False` what-if, where it ran.
"""

from __future__ import annotations

from advisor.core.artifacts import Capture
from advisor.core.model import GraphSplit
from advisor.judge.attribute import AttributionResult
from advisor.judge.summaries import RegionSummary


def graph_splits(
    capture: Capture, att: AttributionResult | None, graph_call_us: float
) -> tuple[GraphSplit, ...]:
    """Each graph DDP's optimizer split, with its pieces (capture), its graph calls per step
    (profile, when there is one) and the estimated price of the extra calls."""
    out = []
    for graph in capture.graphs:
        if graph.ddp_graphs < 2:
            continue
        summary = att.regions.get(graph.compile_id) if att is not None else None
        split = GraphSplit(graph.compile_id, graph.function, graph.ddp_graphs, 0.0)
        out.append(_priced(split, summary, graph_call_us) if summary is not None else split)
    return tuple(out)


def _priced(split: GraphSplit, summary: RegionSummary, graph_call_us: float) -> GraphSplit:
    """The extra graph calls per step beyond one forward graph (and its backward) per region
    instance, priced at one graph call each."""
    instances = summary.graph_instances
    extra_forward = max(0.0, summary.graph_calls - instances)
    extra_backward = max(0.0, summary.backward_calls - instances) if summary.backward_calls else 0.0
    extra = extra_forward + extra_backward
    return GraphSplit(
        compile_id=split.compile_id,
        function=split.function,
        graphs=split.graphs,
        graph_calls=summary.graph_calls_per_instance or 0.0,
        backward_calls=summary.backward_calls,
        extra_calls=extra,
        graph_call_us=graph_call_us,
        cost_ms=extra * graph_call_us / 1e3,
    )
