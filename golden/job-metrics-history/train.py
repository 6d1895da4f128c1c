import tau

for step in range(300):
    tau.log({"loss": 1.0 / (step + 1), "acc": step / 300}, step=step)
