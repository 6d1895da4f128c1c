#!/usr/bin/env -S python3 -u
print("unbuffered")
