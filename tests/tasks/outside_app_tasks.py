"""A task module outside every installed app (``tests`` is not one): the durable backend
refuses its task when the module is imported (tests/tasks/test_django_contract.py)."""

try:
    from django.tasks import task
except ImportError:  # Django 5.2 with the django-tasks backport
    from django_tasks import task


@task
def outside(x):
    return x
