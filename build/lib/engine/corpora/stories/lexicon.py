"""The stories' words: characters with their gender, objects, colours, sizes, places, feelings,
and the pronouns that refer back to them."""

from __future__ import annotations

# ---- lexicon -------------------------------------------------------------------------------------

#: Name → gender ("f" or "m").
CHARACTERS: dict[str, str] = {
    "Lily": "f",
    "Tom": "m",
    "Anna": "f",
    "Ben": "m",
    "Mia": "f",
    "Sam": "m",
    "Emma": "f",
    "Max": "m",
    "Lucy": "f",
    "Jack": "m",
    "Sara": "f",
    "Leo": "m",
    "Zoe": "f",
    "Finn": "m",
    "Ella": "f",
    "Noah": "m",
    "Ruby": "f",
    "Omar": "m",
    "Nina": "f",
    "Theo": "m",
}

OBJECTS: tuple[str, ...] = (
    "ball",
    "kite",
    "book",
    "hat",
    "cup",
    "box",
    "toy",
    "car",
    "boat",
    "doll",
    "drum",
    "shoe",
    "sock",
    "bag",
    "key",
    "bell",
    "apple",
    "cake",
    "stick",
    "stone",
    "shell",
    "flower",
    "balloon",
    "train",
    "truck",
    "pen",
    "coin",
    "ring",
    "leaf",
    "egg",
)

COLOURS: tuple[str, ...] = ("red", "blue", "green", "yellow", "pink", "black", "white", "orange", "purple", "brown")
SIZES: tuple[str, ...] = ("big", "little", "small", "tiny", "old", "new")
PLACES: tuple[str, ...] = ("park", "garden", "kitchen", "forest", "yard", "shop", "house", "classroom", "hall", "barn")
FEELINGS: tuple[str, ...] = ("happy", "sad", "glad", "tired", "proud", "sorry")

#: Pronoun → gender of its antecedent ("f", "m", "n" for the object, "pl" for a pair).
PRONOUN_GENDER: dict[str, str] = {"he": "m", "him": "m", "she": "f", "her": "f", "it": "n", "they": "pl"}

SUBJ_PRONOUN = {"f": "she", "m": "he"}
OBJ_PRONOUN = {"f": "her", "m": "him"}
VOWELS = tuple("aeiou")
