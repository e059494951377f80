# The masked-image-modelling CPU demos' schedule: demo_4e.py with AdamW at
# MAE's betas (0.9, 0.95) and weight decay 0.05; each demo sets its lr.
_base_ = './demo_4e.py'

optim_wrapper = dict(
    optimizer=dict(type='AdamW', betas=(0.9, 0.95), weight_decay=0.05)
)
