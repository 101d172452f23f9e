"""CustomResourceDefinitions served end to end: the controller that follows CRDs (controller.py: serving, names,
cleanup), custom resources' writes (rest.py) and versions (conversion.py, whose webhooks are called with the
admission webhooks' client). Discovery, OpenAPI and tables read the registry the controller keeps current."""
