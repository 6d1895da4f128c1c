#!/bin/sh
echo "a shell script named .py"
