"""Derivatives beyond one ``backward`` call, built on the core's reverse pass.

- ``functional``: ``gradients`` (``torch.autograd.grad``), the function transforms of JAX and
  HIPS autograd (``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``jacobian``, ``hessian``)
  and ``gradcheck``;
- ``custom``: your own operation (``custom_op``), a float function and its derivative rule;
- ``check``: the analytic and numeric gradients ``gradcheck`` and ``vjpgrad.testing`` compare.
"""
