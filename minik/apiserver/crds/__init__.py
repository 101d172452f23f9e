"""CustomResourceDefinitions served end to end: the controller that follows CRDs (controller.py: serving, names,
cleanup), custom resources' writes (rest.py) and versions (conversion.py), and where a webhook's service leads
(services.py). Discovery, OpenAPI and tables read the registry the controller keeps current."""
