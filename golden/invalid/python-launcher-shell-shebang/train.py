#!/bin/bash
echo "not python"
