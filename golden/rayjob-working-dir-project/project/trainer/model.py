"""Model code that a lone script could not import."""


def build():
    return "model"
