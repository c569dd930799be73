# Honest: the test task's scale (x * factor), its inputs rebuilt by the worker in full-size
# cases, whose reference keeps no inputs file (lean inputs).
def scale(x, factor):
    return x * factor
