base rsa
receipt op-1 abandoned cancelled
