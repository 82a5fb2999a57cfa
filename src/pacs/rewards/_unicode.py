"""Unicode a model writes, as the LaTeX math-verify reads (docs/grading_policy.md, "Unicode").

``½`` -> ``\\frac{1}{2}``, ``√2`` -> ``\\sqrt{2}``, ``x²`` -> ``x^{2}``, ``π`` -> ``\\pi``, minus
look-alikes -> ``-``, relation signs -> their LaTeX (read by :mod:`pacs.rewards._relation`).
Linear in the text's length.
"""

from __future__ import annotations

import re

# A mixed number's whole part is read only up to this many digits (int() refuses more than 4300).
MAX_WHOLE_DIGITS = 1000

_UNICODE_SYMBOLS = str.maketrans(
    {
        "\u2212": "-",  # minus sign
        "\u2013": "-",  # en dash, as models write a minus
        "\u00d7": "\\times ",
        "\u22c5": "\\cdot ",
        "\u00b7": "\\cdot ",
        "\u00f7": "\\div ",
        "\u03c0": "\\pi ",
        "\u221e": "\\infty ",
        "\u2264": "\\le ",
        "\u2265": "\\ge ",
        "\u2260": "\\ne ",
        "\u2044": "/",  # fraction slash
        # relations and hedges: read by pacs.rewards._relation as their LaTeX
        "\u2248": "\\approx ",
        "\u2192": "\\to ",
        "\u27f6": "\\longrightarrow ",
        "\u21d2": "\\Rightarrow ",
        "\u27f9": "\\implies ",
        "\u21d4": "\\iff ",
        "\u21a6": "\\mapsto ",
        "\u2261": "\\equiv ",
        "\u2254": ":=",
        "\u223c": "\\sim ",
        "\u2243": "\\simeq ",
        "\u2245": "\\cong ",
        "\u2208": "\\in ",
        "\u2209": "\\notin ",
        "\u2234": "\\therefore ",
        "\u2a7d": "\\le ",
        "\u2a7e": "\\ge ",
        "\u2228": "\\lor ",
        "\u00b1": "\\pm ",
        "\u2213": "\\mp ",
        "\uff1d": "=",
        "\u2252": "\\approx ",  # ≒ approximately equal (Japanese usage)
        "\u224a": "\\approx ",
        "\u27fa": "\\iff ",
        "\u222a": "\\cup ",
        "\u2229": "\\cap ",
        "\u2205": "\\emptyset ",
        "\u2220": "\\angle ",
        "\u2218": "\\circ ",
        "\u2217": "*",
        "\u2223": "|",
        "\uff0b": "+",
        "\uff0c": ",",
        "\u2236": ":",  # ratio
        "\u2215": "/",  # division slash
        "\u2216": "\\setminus ",
    }
    # minus look-alikes: hyphens, dashes, the small and fullwidth hyphen-minus
    | dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2014\u2015\ufe63\uff0d\u02d7\u2796"), "-")
    # equality with a mark (≐ ≑ ≓ ≕ ≖ ≗ ≘ ≙ ≚ ≛ ≜ ≝ ≞ ≟ ≍ ⩵ ⩶): an equality, its claim checked
    | dict.fromkeys(map(ord, "\u2250\u2251\u2253\u2255\u2256\u2257\u2258\u2259\u225a"), "=")
    | dict.fromkeys(map(ord, "\u225b\u225c\u225d\u225e\u225f\u224d\u2a75\u2a76"), "=")
)
_VULGAR = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5)}
_VULGAR |= {"⅖": (2, 5), "⅗": (3, 5), "⅘": (4, 5), "⅙": (1, 6), "⅚": (5, 6), "⅐": (1, 7)}
_VULGAR |= {"⅛": (1, 8), "⅜": (3, 8), "⅝": (5, 8), "⅞": (7, 8), "⅑": (1, 9), "⅒": (1, 10)}
_VULGAR_RE = re.compile(rf"(?<!\d)(\d*)([{''.join(_VULGAR)}])")
_ROOTS = {"√": "\\sqrt", "∛": "\\sqrt[3]", "∜": "\\sqrt[4]"}
_ROOT_RE = re.compile(r"([√∛∜])\s*(\d+(?:\.\d+)?|[A-Za-z]|\\[A-Za-z]+|\{[^{}]*\}|\([^()]*\))?")
_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻"
_SUPERSCRIPT_RE = re.compile(f"[{_SUPERSCRIPTS}]+")
_FROM_SUPERSCRIPT = str.maketrans(_SUPERSCRIPTS, "0123456789+-")


def unicode_to_latex(s: str) -> str:
    """``½`` -> ``\\frac{1}{2}`` (``2½`` -> ``\\frac{5}{2}``), ``√2`` -> ``\\sqrt{2}``, ``x²`` ->
    ``x^{2}``, ``π`` -> ``\\pi``, ``−`` -> ``-``, ``×`` -> ``\\times``: math-verify reads none
    of them."""
    s = s.translate(_UNICODE_SYMBOLS)
    s = _VULGAR_RE.sub(_vulgar_fraction, s)
    s = _ROOT_RE.sub(_root, s)
    return _SUPERSCRIPT_RE.sub(lambda m: "^{" + m.group().translate(_FROM_SUPERSCRIPT) + "}", s)


def _vulgar_fraction(match: re.Match) -> str:
    whole, (num, den) = match.group(1), _VULGAR[match.group(2)]
    if len(whole) > MAX_WHOLE_DIGITS:
        return match.group(0)
    return f"\\frac{{{int(whole or '0') * den + num}}}{{{den}}}"


def _root(match: re.Match) -> str:
    command, operand = _ROOTS[match.group(1)], match.group(2)
    if operand is None:
        return command + " "
    if operand[0] in "{(":
        operand = operand[1:-1]
    return f"{command}{{{operand}}}"
