def factory(device)
    return None
