"""Entry point: python3 -m trainer.main."""
from trainer.model import build

if __name__ == "__main__":
    print(build())
