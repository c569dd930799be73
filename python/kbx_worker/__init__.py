"""kbx_worker: the Python side of kbx.

Runs task references (reference mode) and untrusted candidates (candidate mode) under the
supervision of the C++ `kbx` binary. Talks to it over dedicated pipe file descriptors and
passes tensors through files in the job directory. Depends on the standard library, numpy,
torch and triton only.
"""

PROTOCOL_VERSION = 1
