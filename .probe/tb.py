import numpy as np, traceback
from vjpgrad import grad, vmap
def f(x):
    if x.data > 0:
        return x * x
    return x
try:
    vmap(grad(f))(np.array([1.0, 2.0]))
except Exception as e:
    tb = e.__traceback__
    while tb: print(tb.tb_frame.f_code.co_filename.split("src/")[-1], tb.tb_frame.f_code.co_name); tb = tb.tb_next
    print(type(e).__name__, str(e)[:150])
