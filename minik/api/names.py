"""Names the server makes up: ``generateName`` prefixes completed with five random characters, as Kubernetes'
SimpleNameGenerator does (from an alphabet without vowels or look-alikes, so no word or ambiguity appears)."""

from __future__ import annotations

import random

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
RANDOM_LENGTH = 5


def generate_name(base: str) -> str:
    """``base`` followed by five random characters of SAFE_ALPHABET."""
    return base + "".join(random.choices(SAFE_ALPHABET, k=RANDOM_LENGTH))
