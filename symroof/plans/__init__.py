"""Training and serving plans: strategies on a mesh, step time, memory and critical batches."""
