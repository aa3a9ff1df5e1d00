"""`check`: the kernel's BPF_BTF_LOAD rules applied to a BTF (validator.py), in its three
passes (records.py, resolve.py, the type-tag order), with one message table
(spec/messages.py, worded by words.py) for the reference and the compiled pass
(csrc/check.c)."""
