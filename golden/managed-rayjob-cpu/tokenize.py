print("tokenizing")
