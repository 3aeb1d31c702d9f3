"""core.operations: exact counts of the arithmetic torch executes."""

import torch

from reprolab.core.operations import count_operations


def test_a_matrix_product_counts_two_operations_per_multiply_add():
    a, b = torch.ones(3, 4), torch.ones(4, 5)
    operations, product = count_operations(lambda: a @ b)
    assert operations == 2 * 3 * 4 * 5
    assert torch.equal(product, torch.full((3, 5), 4.0))


def test_element_wise_work_counts_one_operation_per_output_element():
    x = torch.ones(7, 3)
    operations, _ = count_operations(lambda: x + x)
    assert operations == 21


def test_a_backward_pass_is_counted_too():
    weight = torch.ones(4, 2, requires_grad=True)
    inputs = torch.ones(3, 4)
    forward, _ = count_operations(lambda: (inputs @ weight).sum())
    both, _ = count_operations(lambda: (inputs @ weight).sum().backward())
    assert both > forward
