"""The MiniApp protocol's parts, one module per service of the SDK (`lineup.sdk._services`).

Authors and the runtime import them all from `lineup.sdk.protocol`, which gathers them.
"""
