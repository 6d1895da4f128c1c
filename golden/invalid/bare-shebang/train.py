#!
print("no interpreter")
