"""Learning validation of the value-driven memory: a simulated model and verifier in which each
memory item has a hidden usefulness, run through the product's own retrieval, reward, attribution
and update code (world.py: the hidden world; sim.py: the campaign loop and the memories;
__main__.py: the benchmark, its curves, margins, intervals and the parameter sweep).

This validates the learning machinery (does value-driven retrieval find the useful items and beat
similarity-only and random retrieval at equal budget?), not the quality of any model: the "model"
here is a coin whose bias the retrieved items move.
"""
