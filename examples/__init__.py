"""Example MiniApps kept in the repository, shipped only as signed bundles (`make run` packs and
signs each package here into the local catalog). Each imports nothing of LineUp but `lineup.sdk`
and its own modules, relatively: in its bundle the package is top-level (`draw_and_guess`).
"""
