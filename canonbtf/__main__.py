from .entry import canonbtf

canonbtf()
