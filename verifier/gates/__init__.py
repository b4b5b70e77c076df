"""One module per gate: hack (static python + native, runtime integrity), compile, correctness,
latency. Each produces a frozen :class:`verifier.result.GateResult`."""
