"""A teacher task, training and surrogate settings small enough for unit tests of ndfa."""

TASK = {
    "dataset": "teacher",
    "arch": "mlp",
    "hidden": [8, 8, 8],
    "activation": "tanh",
    "n_train": 96,
    "n_test": 32,
    "n_features": 6,
    "n_classes": 4,
    "teacher_hidden": [8],
    "teacher_gain": 1.0,
    "teacher_seed": 0,
    "augment": "none",
}
TRAIN = {
    "epochs": 2,
    "batch_size": 32,
    "lr": 3e-3,
    "optimizer": "adam",
    "weight_decay": 0.0,
    "momentum": 0.0,
    "schedule": "constant",
    "align_batch": 32,
    "eval_batch_size": 64,
    "device": "cpu",
}
SURROGATE = {"width": 8, "lr": 1e-3, "target": "softmax", "jvp_weight": 0.0, "skip": True}
