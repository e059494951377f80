"""Code the analysis and development tools share (tools/analysis_tools,
tools/dev): the model-zoo report's probe choice and table, its dense
rows (dense_zoo), the DINOv2 reference and the mmssl side and timing of
the speed comparisons.

Nothing here is imported by the rest of mmssl.
"""
