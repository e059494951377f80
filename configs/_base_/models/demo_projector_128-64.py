# The CPU demos' projector and contrastive head: a 2-layer MLP (NonLinearNeck,
# global average pool, 128 hidden -> 64 out, width-16 ResNets give 128
# channels) and InfoNCE over cosine similarities at temperature 0.2.
# One private key, ``_demo_projector`` (neck, head); a demo lists this file
# among its bases and pops the key (mmengine takes a key from one base
# only, and most demos already take `model` from their backbone's base):
#   __proj = _base_.pop('_demo_projector')
#   model = dict(type=..., neck=__proj['neck'], head=__proj['head'])
_demo_projector = dict(
    neck=dict(
        type='NonLinearNeck',
        in_channels='auto',
        hid_channels=128,
        out_channels=64,
        num_layers=2,
        with_avg_pool=True,
    ),
    head=dict(
        type='ContrastiveHead',
        loss=dict(type='CrossEntropyLoss'),
        temperature=0.2,
    ),
)
