import ray

ray.init()
print("vision encoder training")
