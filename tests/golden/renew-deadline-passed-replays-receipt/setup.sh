base rsa
# The own receipt comes first: a late attempt of a finished operation
# replays it.
receipt op-1 renewed
