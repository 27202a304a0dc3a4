"""The worker protocol: frames, limits, a sans-IO connection, a thin trio adapter, the
worker-side SDK and the reference workers. The lowest layer: imports nothing of Maia's."""
