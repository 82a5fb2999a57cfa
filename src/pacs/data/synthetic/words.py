"""The words both synthetic tasks draw from: a handful of short names and objects, which the tiny
profile's ~384-token BPE merges into one or two tokens each."""

from __future__ import annotations

NAMES = (
    ("Mia", "She"),
    ("Tom", "He"),
    ("Ann", "She"),
    ("Sam", "He"),
    ("Zoe", "She"),
    ("Ben", "He"),
)
OBJECTS = (
    ("apple", "apples"),
    ("pen", "pens"),
    ("card", "cards"),
    ("coin", "coins"),
    ("book", "books"),
    ("shell", "shells"),
)
