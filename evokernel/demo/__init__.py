"""The offline demo: a scripted campaign on a handful of bundled CPU tasks.

``script.json`` is generated from the kernels in ``kernels/`` by :mod:`evokernel.demo.make_script`
(``python -m evokernel.demo.make_script``); a test keeps the two in sync. Every response is written
for this project and labelled as scripted: no real model produced them.
"""
