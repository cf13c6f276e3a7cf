"""Load over time: the soak (`python -m bench.soak`) and the backlog drain at two depths
(`python -m bench.soak.backlog`). bench/README.md, "Soak" and "Backlog"."""
