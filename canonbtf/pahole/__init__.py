"""`canonbtf-pahole`: pahole's command line for BTF encoding (front.py) and the job it
asks for, done with the library (run.py)."""
