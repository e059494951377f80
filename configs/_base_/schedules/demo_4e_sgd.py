# The ResNet CPU demos' schedule: demo_4e.py with SGD (momentum 0.9,
# weight decay 5e-4); each demo sets its lr.
_base_ = './demo_4e.py'

optim_wrapper = dict(
    optimizer=dict(type='SGD', momentum=0.9, weight_decay=5e-4)
)
