"""Code the development scripts beside this folder share: the model-zoo
report's probe choice and table, its dense rows (dense_zoo), the DINOv2
reference and the mmssl side and timing of the speed comparisons, the
mutation-test report and decorator lifter.

Not part of the installed package: a script run as
``python .dev_scripts/x.py`` finds it beside itself.
"""
