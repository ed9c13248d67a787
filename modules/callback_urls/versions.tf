terraform {
  required_version = ">= 1.7"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.80, < 7"
    }
    # terraform_data is built in: the package is built without archive/null providers.
  }
}
