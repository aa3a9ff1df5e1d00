"""ELF files: reading a file's section table (read.py) and writing a copy with BTF
sections added or replaced through objcopy (write.py)."""
