"""Emitters turn a Btf into text; they never depend on type ids except where the format itself prints them, as raw does."""  # noqa: E501
