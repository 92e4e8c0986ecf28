"""Test scaffolding: real servers on 127.0.0.1 for the tests and benchmarks (never imported by the package itself).

* :mod:`~streamcue.testing.stub_llm`: a deterministic OpenAI-compatible chat server over real HTTP.
"""

__all__: list[str] = []
